"""The Google-cell scheduler's decision logic, free of any transport (unit-testable without Batsim)."""
