"""The Atom review UI: browser, atom page, review actions and the quarantine queue.

Function views under `t/<slug>/atoms/` (atoms/ui/urls.py). Reads go straight to the
tenant's storage (reviewers see everything, quarantined atoms included); every change goes
through the engine's services (`atoms_write`, `atoms_approve`), never a write path of its own.
`graph.py` and `diff.py` are pure Python, with no Django.
"""
