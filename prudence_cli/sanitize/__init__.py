"""Risk mitigation and release (PRUDEnce workflow steps 7-8, section 6): suppression to a
fixpoint, the release folder, and the ledger of what each recipient already has."""
