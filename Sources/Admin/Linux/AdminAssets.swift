/// The admin page's stylesheet and its one script: ours, served from the binary (no third-party
/// asset, nothing fetched from elsewhere: the page works on a LAN without internet).
enum AdminAssets {
  static let css = """
    :root { color-scheme: light dark; --accent: #0b6e4f; --danger: #b3261e; }
    body { font: 16px/1.4 system-ui, sans-serif; margin: 0; }
    header { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1rem; padding: .5rem 1rem; background: var(--accent); color: #fff; }
    header h1 { font-size: 1.2rem; margin: 0; }
    header a, header .who { color: #fff; margin-right: .75rem; }
    nav { display: flex; flex-wrap: wrap; align-items: center; gap: .25rem; }
    main { padding: 1rem; max-width: 60rem; margin: auto; }
    .card { border: 1px solid #8884; border-radius: .5rem; padding: .75rem 1rem; margin-bottom: 1rem; }
    .card ul { margin: 0; padding-left: 1.2rem; overflow-wrap: anywhere; }
    label { display: block; margin: .5rem 0; }
    img.camera, img.sheet { max-width: 100%; height: auto; border: 1px solid #8884; }
    @media print { header, nav, p, button, a { display: none; } img.sheet { border: 0; } }
    textarea { font: 0.85rem ui-monospace, monospace; width: 100%; box-sizing: border-box; }
    input.check { width: auto; }
    input { font: inherit; padding: .4rem; width: 100%; max-width: 22rem; box-sizing: border-box; }
    button { font: inherit; padding: .6rem 1rem; margin: .25rem .25rem .25rem 0; border-radius: .4rem; border: 0; background: var(--accent); color: #fff; min-height: 44px; }
    button.danger { background: var(--danger); }
    form.inline { display: inline; }
    .error { color: var(--danger); font-weight: 600; }
    .events li { font-family: ui-monospace, monospace; font-size: .85rem; }
    table { border-collapse: collapse; width: 100%; }
    th, td { text-align: left; padding: .3rem; border-bottom: 1px solid #8884; }
    form.filters { display: flex; flex-wrap: wrap; gap: 0 1rem; align-items: end; }
    form.filters label { margin: .25rem 0; }
    select { font: inherit; padding: .4rem; max-width: 100%; }
    #history code { font-size: .8rem; overflow-wrap: anywhere; }
    #history { table-layout: fixed; }
    #history th:nth-child(1) { width: 3.5rem; }
    @media (max-width: 40rem) { #history th:nth-child(1), #history td:nth-child(1), #history th:nth-child(5), #history td:nth-child(5) { display: none; } }
    """

  static let script = """
    "use strict";
    // Decisions live: the reader's WATCH lines, newest first (at most 50 kept).
    document.addEventListener("DOMContentLoaded", () => {
      const list = document.getElementById("events");
      if (list && window.EventSource) {
        const source = new EventSource("/events");
        source.onmessage = (e) => {
          const item = document.createElement("li");
          item.textContent = e.data;
          list.insertBefore(item, list.firstChild);
          while (list.children.length > 50) list.removeChild(list.lastChild);
        };
      }
      // What the reader said to the last action.
      const said = document.getElementById("said");
      const params = new URLSearchParams(window.location.search);
      if (said && params.has("said")) said.textContent = params.get("said");
      // People: a search over labels and tags.
      const search = document.getElementById("search");
      if (search) {
        search.addEventListener("input", () => {
          const q = search.value.toLowerCase();
          for (const row of document.querySelectorAll("#people tbody tr")) {
            row.hidden = q !== "" && !row.textContent.toLowerCase().includes(q);
          }
        });
      }
      // Enrol by scanning: the candidates refresh every 2 s while no label is being typed.
      const candidates = document.getElementById("candidates");
      if (candidates) {
        setInterval(() => {
          if (candidates.contains(document.activeElement)) return;
          fetch("/enrol/candidates").then((r) => (r.ok ? r.text() : null)).then((rows) => {
            if (rows !== null && !candidates.contains(document.activeElement)) candidates.innerHTML = rows;
          });
        }, 2000);
      }
      // Import: the chosen file read into the form's text (the page sends it; the reader checks it).
      const file = document.getElementById("csv-file");
      if (file) {
        file.addEventListener("change", () => {
          if (file.files[0]) file.files[0].text().then((t) => { document.getElementById("csv").value = t; });
        });
      }
      const archive = document.getElementById("archive-file");
      if (archive) {
        archive.addEventListener("change", () => {
          const reader = new FileReader();
          reader.onload = () => { document.getElementById("archive").value = String(reader.result).split(",")[1] || ""; };
          if (archive.files[0]) reader.readAsDataURL(archive.files[0]);
        });
      }
      // The camera's picture: a new one on demand.
      const camera = document.getElementById("camera");
      const refresh = document.getElementById("refresh");
      if (camera && refresh) refresh.addEventListener("click", () => { camera.src = "/camera.png?t=" + Date.now(); });
      // A guest pass's sheet: printed as it is (the print style shows the sheet alone).
      const print = document.getElementById("print");
      if (print) print.addEventListener("click", () => window.print());
      for (const form of document.querySelectorAll("form.confirm")) {
        form.addEventListener("submit", (e) => { if (!window.confirm("Remove this person from the allow-list?")) e.preventDefault(); });
      }
    });
    """
}
