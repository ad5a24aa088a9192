"""The ``[telemetry]`` section: where traces go. Off (no endpoint) by default."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from wakeful.kernel.config_base import ConfigError, Section, read_secret_file

TRACES_PATH = "/v1/traces"


class TelemetrySection(Section):
    """Traces of each event's work, exported over OTLP. Off unless otlp_endpoint is set;
    off, the OpenTelemetry SDK is not even imported."""

    otlp_endpoint: str | None = Field(
        default=None,
        examples=["http://127.0.0.1:4318"],
        description="The collector's OTLP/HTTP base URL; spans are posted to "
        f"<otlp_endpoint>{TRACES_PATH} (a URL already ending so is used as it is). "
        "Unset: no tracing.",
    )
    protocol: Literal["http/protobuf"] = Field(
        default="http/protobuf", description="The OTLP transport; only http/protobuf."
    )
    headers_file: Path | None = Field(
        default=None,
        description="A file of headers sent with each export, one 'Name: value' per line "
        "(an API key for a hosted collector); the values are secrets, never logged.",
    )
    service_name: str = Field(
        default="wakeful", min_length=1, description="The service.name of every span."
    )
    sample_ratio: float = Field(
        default=1.0,
        ge=0.0,
        le=1.0,
        description="The share of events traced (0 to 1); an event's trace is kept or "
        "dropped whole.",
    )
    timeout_s: float = Field(
        default=5.0, gt=0, description="How long one export may take before it is dropped."
    )
    max_queue_size: int = Field(
        default=2048,
        ge=1,
        description="Spans held while the collector is slow or down; more are dropped, "
        "never waited for.",
    )

    @field_validator("otlp_endpoint")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL such as http://127.0.0.1:4318")
        return value

    @property
    def configured(self) -> bool:
        return self.otlp_endpoint is not None

    def traces_url(self) -> str:
        assert self.otlp_endpoint is not None
        base = self.otlp_endpoint.rstrip("/")
        return base if base.endswith(TRACES_PATH) else base + TRACES_PATH

    def headers(self) -> dict[str, str]:
        """The export's headers, from ``headers_file`` (ConfigError naming a bad line)."""
        if self.headers_file is None:
            return {}
        text = read_secret_file(self.headers_file, "telemetry.headers_file")
        headers: dict[str, str] = {}
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            name, colon, value = line.partition(":")
            if not colon or not name.strip() or not value.strip():
                raise ConfigError(
                    f"telemetry.headers_file: line {number} of {self.headers_file} is not "
                    "'Name: value'; write one header per line, e.g. 'Authorization: Bearer …'"
                )
            headers[name.strip().lower()] = value.strip()
        return headers


class TelemetrySettings(BaseModel):
    telemetry: TelemetrySection = Field(default_factory=TelemetrySection)
