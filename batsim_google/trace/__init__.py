"""Reading the Google cluster-usage trace, version 2.1 (Reiss, Wilkes, Hellerstein), and SWF logs,
and converting them to Batsim workloads, platforms and request laws."""
