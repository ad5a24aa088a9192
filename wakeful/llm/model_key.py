"""Where the model's API key comes from, said the same way in every message about it."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from wakeful.llm.config import LlmSection


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def key_source(llm: LlmSection) -> str:
    """Where the key was looked for, for "the key was refused" and "no key" messages."""
    if llm.api_key is not None and llm.api_key.get_secret_value():
        return "[llm] api_key in the config file"
    if llm.api_key_file is not None:
        return f"the file {llm.api_key_file} ([llm] api_key_file)"
    if not llm.api_key_env:
        return "nowhere: [llm] api_key_env is empty and no [llm] api_key_file is set"
    return f"the environment variable {llm.api_key_env} ([llm] api_key_env)"


def missing_key_warning(llm: LlmSection, api_key: str | None) -> str | None:
    """One line when a model is configured with no key, unless its server is local."""
    if not llm.configured or api_key:
        return None
    host = urlsplit(llm.base_url).hostname or ""
    if is_loopback(host):
        return None  # llama.cpp, Ollama, vLLM on this machine take no key
    return (
        f"no API key for [llm] model {llm.model!r} at {llm.base_url}: looked in "
        f"{key_source(llm)}; set it there (or [llm] api_key_file), or point [llm] base_url "
        "at a local server on a loopback host, which needs none"
    )
