"""The composition root: config assembly, the daemon's lifespan, the HTTP app, systemd."""
