"""The Batsim profile every service runs, in generated workloads and when the scheduler resubmits one."""

SERVICE_PROFILE = "service"
#: About 31,700 years: longer than any lifetime, so a service ends at its walltime or when killed.
SERVICE_DELAY = 1e12
