/*
 * django-cadence: the schedule form shows only the fields of the chosen kind.
 *
 * The server renders one fieldset per kind (cron, interval, once), each labelled, so the form
 * works without JavaScript; here the fieldsets of the other kinds are hidden and their inputs
 * disabled (a disabled input is not submitted, so a value typed before switching kinds is
 * dropped rather than refused). Instants on this form are typed in the schedule's own zone,
 * so Django's note comparing the browser's clock with the server's does not apply: removed.
 */
"use strict";
(function () {
  function showKind(select) {
    for (const fieldset of document.querySelectorAll("fieldset.cadence-kind")) {
      const shown = fieldset.classList.contains("cadence-kind-" + select.value);
      fieldset.hidden = !shown;
      for (const input of fieldset.querySelectorAll("input, select, textarea")) {
        input.disabled = !shown;
      }
    }
  }

  document.addEventListener("DOMContentLoaded", function () {
    const select = document.getElementById("id_kind");
    if (!select) {
      return;
    }
    document.body.classList.add("cadence-kind-aware");
    select.addEventListener("change", function () {
      showKind(select);
    });
    showKind(select);
  });

  // Django's date and time shortcuts add their notes on "load"; remove them after.
  window.addEventListener("load", function () {
    window.setTimeout(function () {
      for (const note of document.querySelectorAll(".timezonewarning")) {
        note.remove();
      }
    }, 0);
  });
})();
