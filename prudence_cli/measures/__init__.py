"""Risk and quality measures: RAC curves and i-RAC indexes (seed 000, section 3.3)."""
