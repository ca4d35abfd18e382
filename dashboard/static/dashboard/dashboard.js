// Progressive enhancement only: every page works without JavaScript.
document.addEventListener("DOMContentLoaded", () => {
  // A <select data-autosubmit> submits its form on change (the as-of chapter on entity pages).
  for (const select of document.querySelectorAll("select[data-autosubmit]")) {
    select.addEventListener("change", () => select.form.submit());
  }
});
