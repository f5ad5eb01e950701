import type { Collection, Db } from 'mongodb'
import type { Clock } from '../clock.js'
import { newId } from '../ids.js'
import { checkPresetDefinition, type PresetDefinition } from './preset-rules.js'
import type { PresetResponse } from './schemas.js'
import { SYSTEM_PRESETS, systemPresetId } from './system-presets.js'
import { isDuplicateKey } from '../store-compatibility.js'

/** The owner of system presets: an account id no account has, so one indexed `$in` lists both kinds. */
const SYSTEM_OWNER = 'system'

export interface PresetDocument extends PresetDefinition {
  _id: string
  account_id: string
  is_system: boolean
  created_at: Date
  updated_at: Date
}

export function toPresetResponse(doc: PresetDocument): PresetResponse {
  return {
    preset_id: doc._id,
    name: doc.name,
    description: doc.description,
    is_system: doc.is_system,
    command_type: doc.command_type,
    ffmpeg_command: doc.ffmpeg_command,
    ffmpeg_commands: doc.ffmpeg_commands,
    input_file_keys: doc.input_file_keys,
    output_file_definitions: doc.output_file_definitions,
    metadata: doc.metadata,
    created_at: doc.created_at.toISOString(),
    updated_at: doc.updated_at.toISOString(),
  }
}

/** Presets in MongoDB: the account's own, and the system presets every account reads. */
export class PresetRepository {
  readonly #presets: Collection<PresetDocument>

  constructor(
    db: Db,
    private readonly now: Clock,
  ) {
    this.#presets = db.collection<PresetDocument>('presets')
  }

  async ensureIndexes(): Promise<void> {
    await this.#presets.createIndex({ account_id: 1, is_system: -1, created_at: -1, _id: -1 })
  }

  /**
   * Upserts the system presets by their stable ids: definitions follow the
   * code, created_at stays. Safe when several replicas start at once.
   */
  async seedSystemPresets(): Promise<void> {
    const now = this.now()
    for (const { slug, ...definition } of SYSTEM_PRESETS) {
      const checked = checkPresetDefinition(definition)
      try {
        await this.#presets.updateOne(
          { _id: systemPresetId(slug) },
          { $set: { ...checked, account_id: SYSTEM_OWNER, is_system: true }, $setOnInsert: { created_at: now, updated_at: now } },
          { upsert: true },
        )
      } catch (err) {
        // Another replica inserted it first; its definition is the same code's.
        if (!isDuplicateKey(err)) throw err
      }
    }
  }

  async create(accountId: string, definition: PresetDefinition): Promise<PresetDocument> {
    const now = this.now()
    const doc: PresetDocument = { _id: newId('preset'), account_id: accountId, is_system: false, ...definition, created_at: now, updated_at: now }
    await this.#presets.insertOne(doc)
    return doc
  }

  /** System presets first, then the account's, newest first. */
  async list(accountId: string, page: { limit: number; offset: number }): Promise<PresetDocument[]> {
    return this.#presets
      .find({ account_id: { $in: [SYSTEM_OWNER, accountId] } })
      .sort({ is_system: -1, created_at: -1, _id: -1 })
      .skip(page.offset)
      .limit(page.limit)
      .toArray()
  }

  /** A preset the account may read: its own or a system one. */
  async findReadable(accountId: string, presetId: string): Promise<PresetDocument | null> {
    const doc = await this.#presets.findOne({ _id: presetId })
    return doc && (doc.is_system || doc.account_id === accountId) ? doc : null
  }

  /** A preset the account may change: its own only (system presets read as missing). */
  async findOwn(accountId: string, presetId: string): Promise<PresetDocument | null> {
    const doc = await this.#presets.findOne({ _id: presetId })
    return doc && !doc.is_system && doc.account_id === accountId ? doc : null
  }

  async replace(accountId: string, presetId: string, definition: PresetDefinition): Promise<PresetDocument | null> {
    return this.#presets.findOneAndUpdate(
      { _id: presetId, account_id: accountId, is_system: false },
      { $set: { ...definition, updated_at: this.now() } },
      { returnDocument: 'after' },
    )
  }

  async delete(accountId: string, presetId: string): Promise<boolean> {
    const result = await this.#presets.deleteOne({ _id: presetId, account_id: accountId, is_system: false })
    return result.deletedCount === 1
  }
}
