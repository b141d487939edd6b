"""The system Cell (seed 002): several clusters and applications swapped as one, composed
over the Cell engine: one Cell per application, made and owned by the system Cell."""
