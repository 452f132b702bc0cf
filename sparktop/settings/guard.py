"""The `[guard]` table of the config file: what `sparktop guard` forecasts and warns about, where it keeps the
black box, and the opt-in policy of what it may stop.

With no `floor_gb` and no `psi_full_level`, or an empty `stop` list, the guard never acts: it forecasts,
warns and records. Acting is opt-in, and only on what is listed, in the order listed.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sparktop.core.format import GB

Finite = Annotated[float, Field(allow_inf_nan=False)]


class StopRule(BaseModel):
    """One entry of the ordered list of what the guard may stop: exactly one of `container` (a container
    name, `*` and `?` allowed), `compose` (a compose project) or `process` (a host process, `*` and `?`
    allowed, matched against the forms sparktop/guard/policy.py lists: its name, its command line, and
    that command line with its program, or every path in it, cut to the base name). `user` (process rules
    only): the owner's name or uid; without it a process of any user matches."""

    model_config = ConfigDict(extra="forbid")

    container: str | None = None
    compose: str | None = None
    process: str | None = None
    user: str | None = None

    @field_validator("user", mode="before")
    @classmethod
    def _user_text(cls, value: object) -> object:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @model_validator(mode="after")
    def _exactly_one(self) -> StopRule:
        given = [k for k in ("container", "compose", "process") if getattr(self, k)]
        if len(given) != 1:
            raise ValueError("each stop entry names exactly one of container, compose or process")
        if self.user is not None and not self.process:
            raise ValueError("user applies to process entries only (a container has no owner here)")
        if self.user is not None and not self.user.strip():
            raise ValueError("user must name a user (or a uid)")
        return self

    def describe(self) -> str:
        for kind in ("container", "compose", "process"):
            value = getattr(self, kind)
            if value:
                owner = f" (user {self.user})" if self.user is not None else ""
                return f"{kind} {value}{owner}"
        return "nothing"


class GuardSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Forecast and warnings
    horizons_min: list[Annotated[Finite, Field(gt=0, le=24 * 60)]] = Field(
        default_factory=lambda: [10.0, 2.0]
    )
    window_s: Annotated[Finite, Field(ge=10, le=3600)] = 120.0
    reserve_gb: Annotated[Finite, Field(ge=0)] | None = None
    command: str | None = (
        None  # run (no shell) on every new warning and action; SPARKTOP_* in its environment
    )
    webhook: str | None = None  # POSTed a JSON body on every new warning and action
    # Black box
    blackbox: bool = True
    blackbox_dir: str | None = None
    blackbox_max_mb: Annotated[Finite, Field(gt=0)] = 256.0
    blackbox_max_hours: Annotated[Finite, Field(gt=0)] = 24.0
    fsync_s: Annotated[Finite, Field(ge=0, le=60)] = 3.0
    # Policy: off unless a trigger is set AND something is listed
    floor_gb: Annotated[Finite, Field(gt=0)] | None = None
    psi_full_level: Annotated[Finite, Field(gt=0, le=100)] | None = None
    psi_full_seconds: Annotated[Finite, Field(ge=0, le=3600)] = 10.0
    stop: list[StopRule] = Field(default_factory=list)
    cooldown_s: Annotated[Finite, Field(ge=0, le=3600)] = 60.0
    stop_timeout_s: Annotated[Finite, Field(ge=0, le=300)] = 10.0

    @field_validator("webhook")
    @classmethod
    def _http_only(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("webhook must be an http:// or https:// URL")
        return value

    @property
    def armed(self) -> bool:
        return bool(self.stop) and (self.floor_gb is not None or self.psi_full_level is not None)

    @property
    def horizons_s(self) -> tuple[float, ...]:
        return tuple(sorted((h * 60 for h in self.horizons_min), reverse=True))

    @property
    def floor_bytes(self) -> int | None:
        return None if self.floor_gb is None else int(self.floor_gb * GB)

    @property
    def reserve_bytes(self) -> int | None:
        return None if self.reserve_gb is None else int(self.reserve_gb * GB)

    def describe_policy(self) -> str:
        if not self.armed:
            return "policy off: forecasts, warns and records only"
        triggers = []
        if self.floor_gb is not None:
            triggers.append(f"MemAvailable < {self.floor_gb:g} GB")
        if self.psi_full_level is not None:
            triggers.append(f"PSI full ≥ {self.psi_full_level:g} % for {self.psi_full_seconds:g} s")
        listed = ", ".join(rule.describe() for rule in self.stop)
        return (
            f"armed: when {' or '.join(triggers)}, stop the first present of: {listed} "
            f"(of a rule's matches, the one that grew most in {self.window_s:g} s; SIGTERM, "
            f"SIGKILL {self.stop_timeout_s:g} s later if it is still there)"
        )
