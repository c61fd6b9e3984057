"""Notifications: the episodes (open and resolved, with the messages sent for each) and a
page that sends a test notification through each configured channel.

Read-only: the engine opens and resolves episodes; the test page's buttons are gated by the
``send_test_notification`` permission and call ``services.send_test_notification``.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join

from .. import services
from ..conf import cadence_settings
from ..executors.redaction import redact_text
from ..models import Delivery, DeliveryStatus, Notice
from ..notify.channels import ChannelError, recipients
from . import display
from .guard import GuardedAdmin
from .read_only import ReadOnlyAdmin

PERMISSION = "django_cadence.send_test_notification"


class DeliveryInline(admin.TabularInline):
    model = Delivery
    extra = 0
    can_delete = False
    fields = ("state", "channel", "status", "tries", "failures", "sent", "sender", "error")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    sent = display.instant_column("sent_at", "sent")

    @admin.display(description="last error")
    def error(self, obj: Delivery) -> str:
        return redact_text(obj.last_error) if obj.last_error else "-"


@admin.register(Notice)
class NoticeAdmin(ReadOnlyAdmin, GuardedAdmin):
    list_display = ("notice", "event", "state_badge", "opened", "resolved", "count", "told")
    list_display_links = ("notice",)
    list_filter = ("event", "is_open")
    search_fields = ("name",)
    ordering = ("-opened_at",)
    inlines = (DeliveryInline,)
    change_list_template = "admin/django_cadence/notice/change_list.html"
    fields = (
        "event",
        "name",
        "state_badge",
        "opened",
        "last_seen",
        "resolved",
        "count",
        "error",
        "attempt_id",
        "resolution",
    )
    readonly_fields = fields

    class Media:
        css = {"all": ("django_cadence/admin.css",)}

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).prefetch_related("deliveries")

    @admin.display(description="episode", ordering="name")
    def notice(self, obj: Notice) -> str:
        return display.clipped(obj.name, "name")

    @admin.display(description="state", ordering="is_open")
    def state_badge(self, obj: Notice) -> str:
        return format_html('<span class="cadence-notice-{}">{}</span>', obj.state, obj.state)

    opened = display.instant_column("opened_at", "opened", ordering="opened_at")
    last_seen = display.instant_column("last_seen_at", "last seen")
    resolved = display.instant_column("resolved_at", "resolved", ordering="resolved_at")

    @admin.display(description="latest error or reason")
    def error(self, obj: Notice) -> str:
        return redact_text(obj.detail) if obj.detail else "-"

    @admin.display(description="messages")
    def told(self, obj: Notice) -> str:
        """Each message: its state, channel and delivery status."""
        rows = [(d.state, d.channel, d.status) for d in obj.deliveries.all()]
        if not rows:
            return "-"
        return format_html_join("", "<div>{} to {}: {}</div>", rows)

    # --- the test page -------------------------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        test = path(
            "test/",
            self.admin_site.admin_view(self.test_view),
            name="django_cadence_notice_test",
        )
        return [test, *super().get_urls()]

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        extra = {**(extra_context or {}), "can_send_test": request.user.has_perm(PERMISSION)}
        return super().changelist_view(request, extra)

    def test_view(self, request: HttpRequest) -> HttpResponse:
        """GET: the channels; POST: one test message through the channel named."""
        if not request.user.has_perm(PERMISSION):
            raise PermissionDenied
        if request.method == "POST":
            self._send_test(request, request.POST.get("channel", ""))
            return HttpResponseRedirect(reverse("admin:django_cadence_notice_test"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "media": self.media,
            "title": "Send a test notification",
            "channels": [_described(c) for c in cadence_settings.NOTIFY.channels],
        }
        return TemplateResponse(
            request, "admin/django_cadence/notice/test_notification.html", context
        )

    def _send_test(self, request: HttpRequest, channel: str) -> None:
        try:
            answer = services.send_test_notification(channel)
        except (ChannelError, LookupError) as exc:
            self.message_user(
                request, f"The test notification to {channel} failed: {exc}", messages.ERROR
            )
            return
        self.message_user(request, f"Test notification sent to {channel}: {answer}.")


def _described(channel: Any) -> dict[str, str]:
    if channel.type == "mail":
        target = ", ".join(recipients(channel)) or "ADMINS (empty)"
    elif channel.type == "webhook":
        target = redact_text(channel.url)
    elif channel.type == "callable":
        target = channel.path
    else:
        target = "sentry-sdk (its DSN)"
    return {
        "name": channel.name,
        "type": channel.type,
        "target": target,
        "events": ", ".join(channel.events),
    }


def schedule_notifications(schedule_id: int) -> str:
    """A schedule's open episodes and the last message sent about it (the schedule page)."""
    notices = Notice.objects.filter(schedule_id=schedule_id)
    opened = list(notices.filter(is_open=True).order_by("opened_at"))
    last = (
        Delivery.objects.filter(notice__schedule_id=schedule_id, status=DeliveryStatus.SENT)
        .order_by("-sent_at", "-id")
        .first()
    )
    parts: list[str] = [
        format_html(
            '<span class="cadence-badge cadence-notice-open">{} since {} ({})</span>',
            n.get_event_display(),
            display.instant(n.opened_at),
            n.count,
        )
        for n in opened
    ] or ["no open episode"]
    if last is not None:
        parts.append(
            format_html(
                "last message: {} ({}) to {} at {}",
                last.body.get("summary", ""),
                last.state,
                last.channel,
                display.instant(last.sent_at),
            )
        )
    else:
        parts.append("no message sent yet")
    return format_html_join("", "<div>{}</div>", ((p,) for p in parts))
