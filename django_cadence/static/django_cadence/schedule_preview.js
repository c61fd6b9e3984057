/*
 * django-cadence: live preview of a schedule's next occurrences on its admin form.
 *
 * Sends only the spec fields (never the payload) to the preview view whenever one of them
 * changes (debounced) and renders the answer under the "When" fieldset. Everything is built
 * with textContent: nothing the server or the user typed is ever parsed as HTML.
 */
"use strict";
(function () {
  const FIELDS = [
    "kind", "cron", "interval", "timezone", "max_occurrences", "calendars", "calendar_shift",
    "run_at_0", "run_at_1", "start_at_0", "start_at_1", "end_at_0", "end_at_1",
  ];
  const DELAY_MS = 300;

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) {
      node.className = className;
    }
    if (text !== undefined) {
      node.textContent = text;
    }
    return node;
  }

  function render(box, data) {
    box.replaceChildren();
    const errors = Object.entries(data.errors || {});
    if (errors.length) {
      const list = element("ul", "errorlist");
      for (const [field, messages] of errors) {
        for (const message of messages) {
          list.appendChild(element("li", "", field === "__all__" ? message : field + ": " + message));
        }
      }
      box.appendChild(list);
      return;
    }
    if (data.hint) {
      box.appendChild(element("p", "cadence-hint", data.hint));
      return;
    }
    if (data.description) {
      box.appendChild(element("p", "cadence-description", data.description + " (" + data.timezone + ")"));
    }
    const occurrences = data.occurrences || [];
    if (!occurrences.length) {
      box.appendChild(element("p", "", "No further occurrences: the schedule has ended."));
      return;
    }
    const list = element("ol");
    for (const occurrence of occurrences) {
      const item = element("li", "", occurrence.label);
      item.appendChild(element("span", "cadence-utc", occurrence.utc_label));
      if (occurrence.calendar) {
        const skipped = occurrence.calendar.startsWith("skipped");
        item.classList.add(skipped ? "cadence-excluded" : "cadence-shifted");
        item.appendChild(element("span", "cadence-calendar", occurrence.calendar));
      }
      if (occurrence.dst_change) {
        const badge = element("span", "cadence-dst", "UTC offset changes");
        badge.title = "A daylight-saving (or other offset) change happens before this occurrence.";
        item.appendChild(badge);
      }
      list.appendChild(item);
    }
    box.appendChild(list);
  }

  function init() {
    const box = document.querySelector(".cadence-preview[data-preview-url]");
    const form = box && box.closest("form");
    if (!form) {
      return;
    }
    let timer = null;
    let latest = 0;

    function params() {
      const query = new URLSearchParams();
      for (const name of FIELDS) {
        const field = form.elements.namedItem(name);
        if (field && field.value !== undefined && !field.disabled) {
          query.set(name, field.value);
        }
      }
      if (box.dataset.objectId) {
        query.set("object_id", box.dataset.objectId);
      }
      return query;
    }

    async function refresh() {
      const request = ++latest;
      let data;
      try {
        const response = await fetch(box.dataset.previewUrl + "?" + params().toString(), {
          credentials: "same-origin",
          headers: {Accept: "application/json"},
        });
        data = await response.json();
      } catch (error) {
        data = {errors: {__all__: ["The preview is unavailable right now."]}};
      }
      if (request === latest) {
        render(box, data);
      }
    }

    function later() {
      window.clearTimeout(timer);
      timer = window.setTimeout(refresh, DELAY_MS);
    }

    function onEdit(event) {
      if (event.target && FIELDS.includes(event.target.name)) {
        later();
      }
    }

    form.addEventListener("input", onEdit);
    form.addEventListener("change", onEdit);
    // The admin's calendar and clock shortcuts set values without firing input events.
    document.addEventListener("click", function (event) {
      if (event.target.closest && event.target.closest(".datetimeshortcuts, .calendarbox, .clockbox")) {
        later();
      }
    });
    refresh();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
