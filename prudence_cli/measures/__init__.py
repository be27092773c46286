"""Risk and quality measures: RAC curves and i-RAC indexes (Pratesi et al., PRUDEnce, section
3.3)."""
