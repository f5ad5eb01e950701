/** The plans an account can be on; README.md's plan table mirrors this file. */
export const PLANS = ['free', 'trial', 'growth', 'business'] as const
export type Plan = (typeof PLANS)[number]

/** What a plan allows, as the spec's plan gating describes it. */
export interface PlanFeatures {
  /** ytdlp-download and run-ytdlp-command: trials and Growth or higher. */
  videoDownloads: boolean
  /** Per-command webhook_url, storage_destination_id and the storage-destination endpoints. */
  businessFeatures: boolean
}

const FEATURES: Record<Plan, PlanFeatures> = {
  free: { videoDownloads: false, businessFeatures: false },
  trial: { videoDownloads: true, businessFeatures: false },
  growth: { videoDownloads: true, businessFeatures: false },
  business: { videoDownloads: true, businessFeatures: true },
}

export function planFeatures(plan: Plan): PlanFeatures {
  return FEATURES[plan]
}

export function isPlan(value: string): value is Plan {
  return (PLANS as readonly string[]).includes(value)
}
