"""The read playground and the purge pages, included under `t/<slug:slug>/atoms/`."""

from django.urls import path

from atoms.ui import playground, purge

urlpatterns = [
    path("playground/", playground.playground, name="atoms-playground"),
    path("<str:atom_id>/purge", purge.purge_page, name="atoms-purge"),
    path("<str:atom_id>/purge/progress", purge.purge_progress, name="atoms-purge-progress"),
    path("<str:atom_id>/purge/resume", purge.purge_resume, name="atoms-purge-resume"),
]
