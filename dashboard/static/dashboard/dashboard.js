// Progressive enhancement only: every page works without JavaScript.
document.addEventListener("DOMContentLoaded", () => {
  // A <select data-autosubmit> submits its form on change (the as-of chapter on entity pages).
  for (const select of document.querySelectorAll("select[data-autosubmit]")) {
    select.addEventListener("change", () => select.form.submit());
  }
  // A link to a fact folded away (#fact-…, #list-fact-…) opens the folds around it.
  const unfold = () => {
    const target = location.hash && document.getElementById(decodeURIComponent(location.hash.slice(1)));
    if (!target) return;
    for (let el = target; el; el = el.parentElement) if (el.tagName === "DETAILS") el.open = true;
    const body = target.querySelector("details.fact-body");
    if (body) body.open = true;
    target.scrollIntoView();
  };
  unfold();
  window.addEventListener("hashchange", unfold);
});
