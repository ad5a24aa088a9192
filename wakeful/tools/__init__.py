"""The built-in tools (files, shell, fetch, grep, human, user) and their registry."""
