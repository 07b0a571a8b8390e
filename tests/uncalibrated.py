"""The Google-cell scheduler without the behaviours calibrated on Borg (placement latency, the free
tier's room and reclaims, the groups' evictions), for tests of one mechanism, whose figures those
delays and draws would blur."""

from __future__ import annotations

from batsim_google.scheduling.policy_config import PolicyConfig

UNCALIBRATED = {
    "placement_latency": 0.0,
    "reclaim_on_placement": 0.0,
    "free_tier_room": False,
    "eviction_rate_normal": 0.0,
    "eviction_rate_production": 0.0,
}
#: The same as options of ``run``.
UNCALIBRATED_OPTIONS = [
    "--placement-latency",
    "0",
    "--no-free-tier-room",
    "--reclaim-on-placement",
    "0",
    "--eviction-rate-normal",
    "0",
    "--eviction-rate-production",
    "0",
]


def mechanics_config(**config) -> PolicyConfig:
    """The scheduler's configuration ``config`` with the calibrated behaviours off unless asked."""
    return PolicyConfig(**{**UNCALIBRATED, **config})
