"""Email: IMAP IDLE in, SMTP out through an exactly-once outbox (SPEC §3 "email")."""
