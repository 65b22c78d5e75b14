"""The Atom review pages, under `t/<slug>/atoms/`. Atom ids are matched as `atom:<...>` so
fixed words beside them (quarantine, badge, and pages added later) never read as an id."""

from django.urls import path, register_converter

from atoms.ui import actions, browser, detail, picker, quarantine


class AtomIdConverter:
    regex = "atom:[^/]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(AtomIdConverter, "atomid")

base = "t/<slug:slug>/atoms/"
one = base + "<atomid:atom_id>/"

urlpatterns = [
    path(base, browser.atom_browser, name="atoms"),
    path(base + "badge", browser.quarantine_badge, name="atoms-badge"),
    path(base + "quarantine/", quarantine.quarantine_queue, name="atoms-quarantine"),
    path(one, detail.atom_detail, name="atom-detail"),
    path(one + "approve", actions.atom_approve, name="atom-approve"),
    path(one + "edit", actions.atom_edit, name="atom-edit"),
    path(one + "retire", actions.atom_retire, name="atom-retire"),
    path(one + "reject", actions.atom_reject, name="atom-reject"),
    path(one + "restore", actions.atom_restore, name="atom-restore"),
    path(one + "link-targets", picker.atom_link_targets, name="atom-link-targets"),
]
