import ScanCore
import ScanPlatform

/// Visitors (docs/admin.md, "The web page"): the counted passes this reader remembers (the
/// reader's `PASSES`), and where passes are issued: never here. A page on the reader's host that
/// held the issuer key would let anyone who takes the reader make passes for every door.
extension AdminSite {
  func visitorsPage(_ session: AdminSessions.Session) -> HTTPResponse {
    guard session.role >= .operator else { return page("Visitors", body: AdminPages.viewerOnly(), session: session, status: 403) }
    return page("Visitors", body: AdminPages.visitors(reply: ask(session, ["PASSES 200"])?.first), session: session)
  }
}

extension AdminPages {
  static func visitors(reply: (body: [String], status: String)?) -> String {
    guard let reply else { return unreachable() }
    var html = """
      <h2>Visitors</h2>
      <p class="card" id="issuing">Guest passes are issued where the issuer key is kept, never on a reader (this page runs
      on one: a reader that held the key would let whoever takes it make passes for every door). On the office machine:
      <code>scangate credential issue --key issuer.key --kid KID --guest "Name" --uses 3 --valid 1d --sheet pass.pdf</code>
      prints the pass's id and makes its sheet to print or send (docs/credentials.md).</p>
      <h3>Passes counted on this reader</h3><p id="passes-count">\(escaped(reply.status))</p>
      <table id="passes"><thead><tr><th>Pass id</th><th>Uses</th><th>First use</th><th>Kept until</th></tr></thead><tbody>
      """
    for line in reply.body {
      let fields = Dictionary(
        line.split(separator: " ").compactMap { f -> (String, String)? in
          guard let eq = f.firstIndex(of: "=") else { return nil }
          return (String(f[..<eq]), String(f[f.index(after: eq)...]))
        }, uniquingKeysWith: { a, _ in a })
      let cells = ["id", "uses", "first", "until"].map { "<td>\(escaped(fields[$0] ?? ""))</td>" }.joined()
      html += "<tr>\(cells)</tr>"
    }
    return html + "</tbody></table>"
  }
}
