"""The Google-cell scheduler without the behaviours calibrated on Borg (placement latency and passes, the free
tier's room, over-commit and reclaims, the preemption's delay, the machines by load, the groups' evictions), for tests of one
mechanism, whose figures those delays and draws would blur."""

from __future__ import annotations

from batsim_google.scheduling.policy_config import PolicyConfig

UNCALIBRATED = {
    "placement_latency": 0.0,
    "pass_rate": 0.0,
    "reclaim_on_placement": 0.0,
    "free_tier_room": False,
    "free_tier_overcommit": 1.0,
    "pay_for_room": False,
    "preemption_delay": 0.0,
    "preemption_delay_spread": 0.0,
    "preempt_share": 0.0,
    "free_tier_preempt_share": 0.0,
    "free_tier_preempt_share_cpu": 0.0,
    "free_tier_preempt_share_alone": 0.0,
    "machines_by_load": False,
    "eviction_rate_normal": 0.0,
    "eviction_rate_production": 0.0,
}
#: The same as options of ``run`` (a flag pair's ``--no-`` side for a boolean).
UNCALIBRATED_OPTIONS = [
    word
    for name, value in UNCALIBRATED.items()
    for word in (["--no-" + name.replace("_", "-")] if value is False else ["--" + name.replace("_", "-"), str(value)])
]


def mechanics_config(**config) -> PolicyConfig:
    """The scheduler's configuration ``config`` with the calibrated behaviours off unless asked."""
    return PolicyConfig(**{**UNCALIBRATED, **config})
