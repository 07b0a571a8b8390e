"""Reading the Google cluster-usage trace, version 2.1 (Reiss, Wilkes, Hellerstein)."""
