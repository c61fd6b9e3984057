/*
 * django-cadence: the list filters drawn by select2 (dalf's "By schedule") get a name.
 *
 * select2 labels its combobox with the value it shows ("All") and gives the box showing that
 * value role="textbox" with no name at all, so a screen reader hears "All, combobox" and
 * cannot tell which filter it is on. Both are named here by the filter's title, the text of
 * the summary above them ("By schedule"); the value shown stays their value. This runs after
 * dalf's script has drawn the widgets (a later ready handler of the same jQuery).
 */
"use strict";
(function ($) {
  function nameFilter(select) {
    const details = select.closest("details[data-filter-title]");
    const summary = details && details.querySelector("summary");
    const widget = select.nextElementSibling;
    if (!summary || !widget || !widget.classList.contains("select2")) {
      return;
    }
    const title = summary.textContent.trim().replace(/\s+/g, " ");
    for (const box of widget.querySelectorAll('[role="combobox"], [role="textbox"]')) {
      box.removeAttribute("aria-labelledby");
      box.setAttribute("aria-label", title);
    }
  }

  $(function () {
    document.querySelectorAll("details[data-filter-title] select").forEach(nameFilter);
  });
})(django.jQuery);
