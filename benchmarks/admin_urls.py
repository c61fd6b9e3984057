"""The admin page benchmark's URLconf: the admin site alone."""

from django.contrib import admin
from django.urls import path

urlpatterns = [path("admin/", admin.site.urls)]
