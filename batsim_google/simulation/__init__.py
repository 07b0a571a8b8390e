"""Running a simulation: Batsim and a scheduler process under timeouts, and the front-ends that connect
the transport-free scheduling core to Batsim's protocol (pybatsim, batsim-py)."""
