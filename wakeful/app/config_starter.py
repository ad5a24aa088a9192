"""The commented starter configuration ``wakeful init`` writes.

It must stay loadable by :func:`wakeful.app.config.load_settings` (a test
checks); optional keys are commented out so the embedded defaults apply.
"""

STARTER_CONFIG = """\
# wakeful configuration.
# Every key has a default; uncomment what you want to change.
# Any key can also be set from the environment as WAKEFUL_<SECTION>__<KEY>,
# e.g. WAKEFUL_LLM__MODEL=gpt-4.1-mini (the environment wins over this file).
# Secrets can come from files (*_file keys), e.g. systemd credentials.

[daemon]
# Where events, trajectories and the generated admin token live.
# Default: $STATE_DIRECTORY under systemd, else ~/.local/state/wakeful
# ($XDG_STATE_HOME/wakeful), or /var/lib/wakeful for root.
# data_dir = "/var/lib/wakeful"
log_level = "info"                      # debug | info | warning | error
# system_prompt = "You are a helpful assistant."

[server]
# Loopback only by default; put a TLS reverse proxy in front to expose it.
bind = "127.0.0.1:8787"
# The bearer token for /api/*. If neither is set, one is generated once and
# stored in <data_dir>/admin-token (mode 0600); the `wakeful` CLI reads it.
# admin_token_file = "/etc/wakeful/admin-token"
# admin_token = "..."
max_body_bytes = 1048576                # requests larger than this get 413
# Host names served besides loopback and the bound address ("*": any), e.g. the
# public name a reverse proxy passes to /hooks/*; browser origins allowed.
# allowed_hosts = ["hooks.example.com"]
# allowed_origins = []
# metrics_labels = false                # /metrics and /readyz name sessions, hooks

[store]
backend = "sqlite"                      # "sqlite" (embedded) | "redis"
# redis_url = "redis://127.0.0.1:6379/0"
# redis_prefix = "wakeful:"             # one daemon per prefix
sqlite_synchronous = "full"             # "full" (safest) | "normal" (faster)

[llm]
provider = "openai"                     # any OpenAI-compatible endpoint
base_url = "https://api.openai.com/v1"  # vLLM, llama.cpp, Ollama: their /v1 URL
# Empty: no model yet; events are stored and wait until you set one.
model = ""                              # e.g. "gpt-4.1-mini"
api_key_env = "OPENAI_API_KEY"          # or api_key_file = "/etc/wakeful/openai-key"
timeout_s = 300                         # the whole call's deadline, retries included
read_timeout_s = 60                     # the longest silence: before the answer or between chunks
max_retries = 2
replay_reasoning = "auto"               # "always" | "never": what reasoning is sent back

[router]
classifier_model = ""                   # empty: routing by rules only
classifier_budget_ms = 300              # a slower classifier falls back to "queue"

[loop]
max_model_calls_per_run = 40
max_run_seconds = 1800
max_consecutive_failures = 3
max_event_crashes = 3                   # an event in this many crashed runs is quarantined
tool_timeout_s = 120
parallel_max_model_calls = 3            # budget of a side session ("parallel")
parallel_budget_s = 20
stop_grace_s = 2.0                      # how long tools get to stop on cancel

[shell]                                 # background tasks: start_shell / monitor_shell
output_events_per_window = 5            # shell.output events per task per window; the rest
output_window_s = 10                    # are counted and reported, not dropped silently
memory_lines = 200                      # output lines kept in memory (the file keeps all)
retain_days = 7                         # then records and output files of ended tasks go

# Webhooks: POST /hooks/<name>, verified per hook.
# [[hooks]]
# name = "github"
# auth = "github"                       # "standard" | "github" | "bearer"
# secret_file = "/etc/wakeful/github-secret"  # one secret per line; all are accepted
# secret_env = ["GITHUB_WEBHOOK_SECRET"]    # and/or secrets = ["..."] (rotation)
# session = "main"
# preset = "github"                     # one-line summaries of push, PRs, issues, CI
# template = "{action} on {repository.full_name}"   # instead of a preset
# priority = "normal"                   # "low" | "normal" | "high" | "urgent"
# max_body_bytes = 1048576
# events = ["push", "pull_request"]     # only these event types (else 202 filtered)
# filters = [{field = "action", one_of = ["opened", "closed"]}]

# Mail accounts: IMAP IDLE in, SMTP out.
# [[email.accounts]]
# name = "work"
# imap_host = "imap.example.com"
# imap_port = 993
# imap_security = "tls"                 # "tls" | "starttls" | "none"
# smtp_host = "smtp.example.com"
# smtp_port = 587
# smtp_security = "starttls"
# username = "me@example.com"
# password_file = "/etc/wakeful/mail-password"
# address = "me@example.com"
# mailboxes = ["INBOX"]
# archive_mailbox = "Archive"
# session = "main"
# owner_senders = ["me@example.com"]    # trusted when authserv_id vouches; others untrusted
# authserv_id = "mx.example.com"        # your receiving server, from Authentication-Results
# authserv_received_above = 0           # Received lines above its header (Gmail: usually 2)
# sent_mailbox = "Sent"                 # where sent copies go; checked after a crash
# initial_sync = "new"                  # "new": only mail arriving from now; "all"
# idle_reissue_s = 1740                 # re-issue IDLE at most every 29 min
# alert_after_s = 300                   # system.alert when a mailbox fails this long
# ignore_senders = ["^noreply@"]        # regexes: mail that never wakes the agent
# ignore_subjects = ["(?i)^newsletter"]
# [email]
# calendar_path = "/var/lib/wakeful/calendar"   # .ics file or folder for the calendar tools

# Timers the daemon keeps itself (the agent adds its own with set_timer).
# [scheduler]
# misfire_grace_s = 600                 # a run missed while down fires once if this recent
# [[timers]]
# name = "daily-summary"
# cron = "0 9 * * 1-5"                  # or interval = "1h", or at = "2026-05-01T09:30:00+02:00"
# timezone = "Europe/Berlin"
# message = "Write the daily summary."
# session = "main"

# Chat apps (docs/chat.md). Anyone not listed gets a pairing code:
# `wakeful pairing approve <platform> <code>` lets them in.
# [[chat.telegram]]
# name = "tg"
# bot_token_file = "/etc/wakeful/telegram-token"
# allowed_user_ids = [123456789]
# mode = "polling"                      # or "webhook" with public_url and secret_token_file
# session = "main"                      # or "per-user"
# [[chat.slack]]                        # Events API URL: https://<host>/chat/slack/work/events
# name = "work"
# bot_token_file = "/etc/wakeful/slack-token"
# signing_secret_file = "/etc/wakeful/slack-signing-secret"
# allowed_user_ids = ["U0123456789"]
# [[chat.matrix]]
# name = "mx"
# homeserver = "https://matrix.example.org"
# user_id = "@wakeful:example.org"
# access_token_file = "/etc/wakeful/matrix-token"
# allowed_users = ["@me:example.org"]

# Where send_user_notification goes before you have written anywhere, and what
# high/urgent ones reach besides (a chat platform's conversation after '#').
# [notify]
# prefer = ["chat:telegram:tg#123456789", "chat:web"]
# urgent = ["chat:telegram:tg#123456789"]

# System events (docs/system-events.md): system.alert when a limit is crossed and
# again when it is over; each is checked once a minute or woken by the kernel.
# [system]
# session = "main"                      # where alerts go
# disk_free_min_mb = 512                # the data directory's disk: alert below either
# disk_free_min_percent = 5
# rss_max_mb = 1024                     # the daemon's own memory
# pending_age_max_s = 600               # an event waiting longer than this in a queue
# user_inactive_after = "8h"            # user.inactive after this silence (default: off)
"""
