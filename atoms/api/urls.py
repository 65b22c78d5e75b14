from django.urls import path

from atoms.api.write import WriteView

urlpatterns = [
    path("write", WriteView.as_view(), name="api-atoms-write"),
]
