"""HTTP helpers every layer above may use: errors, capped bodies, bearer auth, rate limits."""
