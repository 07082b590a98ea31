// quipu serve: small behaviours, no dependencies. Served from the package; the page allows no inline script.
"use strict";

// A form with data-confirm asks before it posts (the server asks again where it matters).
document.addEventListener("submit", function (event) {
  var form = event.target;
  var question = form.getAttribute("data-confirm");
  if (question && !window.confirm(question)) {
    event.preventDefault();
  }
});

// A commit's diff is fetched from the viewer when its entry is first opened, and shown as the
// viewer rendered it (escaped on the server).
document.addEventListener("toggle", function (event) {
  var details = event.target;
  if (!(details instanceof HTMLDetailsElement) || !details.open || details.getAttribute("data-loaded")) {
    return;
  }
  var source = details.getAttribute("data-diff");
  if (!source || source.charAt(0) !== "/" || source.charAt(1) === "/") {
    return;
  }
  details.setAttribute("data-loaded", "1");
  var body = details.querySelector(".diff-body");
  fetch(source + "?fragment=1", {credentials: "same-origin"})
    .then(function (answer) { return answer.ok ? answer.text() : Promise.reject(answer.status); })
    .then(function (markup) {
      var parsed = new DOMParser().parseFromString(markup, "text/html");
      body.replaceChildren.apply(body, Array.prototype.slice.call(parsed.body.childNodes));
    })
    .catch(function () { details.removeAttribute("data-loaded"); });
}, true);
