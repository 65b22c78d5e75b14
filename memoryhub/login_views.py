"""The login page: Django's LoginView, saying so when the login throttle holds a username."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.http import HttpResponse

from memoryhub.login_throttle import locked_for


class ThrottledAuthenticationForm(AuthenticationForm):
    retry_after: int | None = None

    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username")
        if username and self.request is not None:
            self.retry_after = locked_for(self.request, username)
            if self.retry_after is not None:
                minutes = max(1, -(-self.retry_after // 60))
                raise forms.ValidationError(
                    f"Too many failed logins for this account. Try again in {minutes} minute{'s' if minutes > 1 else ''}.",
                    code="throttled")
        return super().clean()


class ThrottledLoginView(LoginView):
    authentication_form = ThrottledAuthenticationForm

    def form_invalid(self, form: AuthenticationForm) -> HttpResponse:
        response = super().form_invalid(form)
        retry_after = getattr(form, "retry_after", None)
        if retry_after is not None:
            response.status_code = 429
            response["Retry-After"] = str(retry_after)
        return response
