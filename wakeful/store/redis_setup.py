"""Connecting to Redis: a URL safe to show, and whether the server keeps what we write."""

from __future__ import annotations

from urllib.parse import urlsplit

import structlog
from redis.asyncio import Redis
from redis.exceptions import ResponseError

log = structlog.get_logger(__name__)

HOW_TO_PERSIST = (
    "in redis.conf set appendonly yes and appendfsync always (the guarantee of SQLite's"
    ' synchronous=FULL; everysec risks the last second), or set [store] backend = "sqlite"'
)


def redacted_url(url: str) -> str:
    """The URL without credentials or query (which may carry a password)."""
    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    userinfo = "***@" if "@" in parts.netloc else ""
    return f"{parts.scheme}://{userinfo}{netloc}{parts.path}"


def durability_warnings(config: dict[str, str]) -> list[str]:
    """What in Redis's CONFIG (appendonly, save, maxmemory...) can lose accepted events."""
    problems = []
    if config.get("appendonly") != "yes":
        if not config.get("save"):
            problems.append(
                "Redis keeps nothing on disk: events acknowledged with 202 are lost if Redis"
                " restarts"
            )
        else:
            problems.append(
                "Redis only snapshots to disk (no appendonly): events acknowledged with 202"
                " since the last snapshot are lost if Redis restarts"
            )
    if config.get("maxmemory", "0") != "0" and config.get("maxmemory-policy") != "noeviction":
        problems.append(
            f"Redis evicts keys when full (maxmemory-policy {config.get('maxmemory-policy')}):"
            " stored events can vanish; set maxmemory-policy noeviction"
        )
    return problems


async def warn_if_not_durable(client: Redis, where: str) -> None:
    """Log a warning for each way this server can lose events the daemon acknowledged."""
    config: dict[str, str] = {}
    try:
        for name in ("appendonly", "appendfsync", "save", "maxmemory", "maxmemory-policy"):
            for key, value in (await client.config_get(name)).items():
                config[str(key)] = str(value or "")
    except ResponseError as exc:  # CONFIG is often disabled on managed Redis
        log.warning(
            "cannot read Redis's persistence settings; make sure it keeps events on disk",
            redis=where,
            error=str(exc),
            how=HOW_TO_PERSIST,
        )
        return
    for problem in durability_warnings(config):
        log.warning(problem, redis=where, how=HOW_TO_PERSIST)
