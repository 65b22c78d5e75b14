from django.urls import path

from atoms.api.index import IndexPrioritizeView, IndexStatusView, IndexUpdateView
from atoms.api.inspect import InspectView
from atoms.api.observe import ManifestView, ObserveView
from atoms.api.purge import PurgeView
from atoms.api.read import ReadView
from atoms.api.search import SearchView
from atoms.api.uses import UsesResetView, UsesView
from atoms.api.write import WriteView

urlpatterns = [
    path("write", WriteView.as_view(), name="api-atoms-write"),
    path("inspect", InspectView.as_view(), name="api-atoms-inspect"),
    path("search", SearchView.as_view(), name="api-atoms-search"),
    path("read", ReadView.as_view(), name="api-atoms-read"),
    path("purge", PurgeView.as_view(), name="api-atoms-purge"),
    path("observe", ObserveView.as_view(), name="api-atoms-observe"),
    path("manifest", ManifestView.as_view(), name="api-atoms-manifest"),
    path("uses", UsesView.as_view(), name="api-atoms-uses"),
    path("uses/reset", UsesResetView.as_view(), name="api-atoms-uses-reset"),
    path("index/update", IndexUpdateView.as_view(), name="api-atoms-index-update"),
    path("index/prioritize", IndexPrioritizeView.as_view(), name="api-atoms-index-prioritize"),
    path("index/status", IndexStatusView.as_view(), name="api-atoms-index-status"),
]
