"""The system Cell: several clusters and applications swapped as one, composed
over the Cell engine: one Cell per application, made and owned by the system Cell."""
