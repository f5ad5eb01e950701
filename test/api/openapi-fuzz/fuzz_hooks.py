"""Schemathesis hooks for test/api/openapi-fuzz.test.ts (loaded through SCHEMATHESIS_HOOKS).

The command endpoints have one rule JSON Schema cannot state: a command string
names its files by placeholder, so it must name exactly the aliases of the maps
beside it ({{in_x}} declared in input_files, every out_* of output_files
written). Schemathesis generates each field on its own, so a schema-valid body
almost never holds a command that fits its maps, and the server's 400 would be
a "valid data rejected" failure that tells nothing.

For positive cases only, this hook rewrites the generated command string(s)
into one that uses the generated maps: `ffmpeg -i {{in_a}} ... {{out_x}} ...`.
Every other generated value (aliases, URLs, filenames, metadata, webhook_url,
storage_destination_id, format_selector) reaches the server as generated, so
positive_data_acceptance still holds the server to the rest of the schema.
Negative cases are never touched.

Positive cases' max_command_run_seconds, vcpu_count and retention_days are also
brought down to the business plan's maximums (the fuzzed account's plan): the document states
the absolute bounds, and above the plan's maximum is a 422 by design.
"""

import re

import schemathesis
from schemathesis.specs.openapi.checks import use_after_free

# DELETE of a storage destination or of the webhook configuration keeps the
# record by the spec ("enabled -> DELETE -> disabled: future jobs cannot use it
# (409); bucket objects not deleted"; "active -> DELETE -> inactive:
# configuration retained"), so reading or patching it afterwards is right.
_RETAINED_AFTER_DELETE = re.compile(r"/(storage-destinations/\{storageDestinationId\}|webhook-config)$")


def _is_positive(case):
    meta = case.meta
    return meta is not None and not meta.generation.mode.is_negative and not any(
        component.mode.is_negative for component in meta.components.values()
    )


def _distinct_filenames(outputs):
    """Two outputs may not share a filename (a rule across entries): keep the first, number the others."""
    seen = set()
    fixed = {}
    for index, (alias, filename) in enumerate(outputs.items()):
        name = filename
        if name in seen:
            name = f"f{index}_{filename}"
        # At most 255 bytes in UTF-8: the schema can only count characters.
        while len(name.encode()) > 255:
            name = name[:-1]
        seen.add(name)
        fixed[alias] = name
    return fixed


def _arguments(inputs, outputs):
    words = []
    for alias in inputs:
        words += ["-i", "{{" + alias + "}}"]
    words += ["{{" + alias + "}}" for alias in outputs]
    return " ".join(words)


def _fit_outputs(body, key):
    outputs = body.get(key) or {"out_result": "result.mp4"}
    body[key] = _distinct_filenames(outputs)
    return body[key]


# The business plan's maximums (api/commands/command-limits.ts,
# api/files/retention.ts): the document
# states only the absolute bounds, since the maximum depends on the account's
# plan (the fuzzed account is on business); above it is 422 by design.
_PLAN_MAXIMUMS = {"max_command_run_seconds": 14400, "vcpu_count": 8, "retention_days": 90}


def _fit_limits(body):
    for field, maximum in _PLAN_MAXIMUMS.items():
        value = body.get(field)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > maximum:
            body[field] = maximum
    return body


def _fit_ffmpeg_body(body):
    if not isinstance(body, dict):
        return body
    # input_files is required unless input_compressed_folder is given (a rule
    # across fields): a command of the folder alone reads one of its entries,
    # and a body with neither gets the input it must have.
    folder_only = "input_files" not in body and isinstance(body.get("input_compressed_folder"), str)
    if "input_files" not in body and not folder_only:
        body["input_files"] = {"in_fuzz": "https://media.example.com/in.mp4"}
    if not folder_only and not isinstance(body.get("input_files"), dict):
        return body
    _fit_limits(body)
    outputs = _fit_outputs(body, "output_files")
    reads = "-i clip.mp4 " + _arguments({}, outputs) if folder_only else _arguments(body["input_files"], outputs)
    command = "ffmpeg " + reads
    if "ffmpeg_commands" in body:
        body["ffmpeg_commands"] = [command] * len(body["ffmpeg_commands"])
    else:
        body["ffmpeg_command"] = command
    return body


def _fit_ytdlp_command(body):
    if isinstance(body, dict):
        _fit_limits(body)
    if isinstance(body, dict) and "ffmpeg_command" in body:
        outputs = _fit_outputs(body, "output_files")
        body["ffmpeg_command"] = _arguments(body["input_urls"], outputs)
    return body


def _fit_preset(body):
    if not isinstance(body, dict):
        return body
    outputs = _fit_outputs(body, "output_file_definitions")
    command = "ffmpeg " + _arguments(body["input_file_keys"], outputs)
    if body.get("command_type", "FFMPEG_COMMAND") == "FFMPEG_COMMAND":
        body["ffmpeg_command"] = command
        body.pop("ffmpeg_commands", None)
    else:
        body["ffmpeg_commands"] = [command]
        body.pop("ffmpeg_command", None)
    return body


FITTERS = {
    ("POST", "/api/v1/run-ffmpeg-command"): _fit_ffmpeg_body,
    ("POST", "/api/v1/run-chained-ffmpeg-commands"): _fit_ffmpeg_body,
    ("POST", "/api/v1/run-multiple-ffmpeg-commands"): lambda body: {
        **body,
        "commands": [_fit_ffmpeg_body(command) for command in body.get("commands", [])],
    },
    ("POST", "/api/v1/run-ytdlp-command"): _fit_ytdlp_command,
    ("POST", "/api/v1/ytdlp-download"): _fit_limits,
    ("POST", "/api/v1/presets"): _fit_preset,
    ("POST", "/api/v1/presets/{presetId}/execute"): _fit_limits,
}


@schemathesis.hook
def map_case(context, case):
    fit = FITTERS.get((case.method.upper(), case.path))
    if fit is not None and _is_positive(case) and isinstance(case.body, dict):
        case.body = fit(case.body)
    return case


@schemathesis.check
def use_after_free_of_removed_resources(ctx, response, case):
    """The built-in use_after_free (which the test excludes), for every path but the two whose DELETE disables.

    Schemathesis's per-operation check settings do not reach its stateful
    phase, where this check runs, so the narrowing is made here.
    """
    if _RETAINED_AFTER_DELETE.search(case.operation.path):
        return None
    return use_after_free(ctx, response, case)
