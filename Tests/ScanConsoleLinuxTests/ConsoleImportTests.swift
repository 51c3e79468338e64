import Glibc
import ScanConsole
import ScanCore
import ScanLinux
import ScanService
import ScanSim
import ScanTestSupport
import Testing

/// IMPORT on a real loop with its allow-list file (docs/console.md, "People"): a CSV in pieces,
/// checked, applied through the durable write and reloaded; one import at a time.
@Suite(.serialized) struct ConsoleImportTests {
  func readFile(_ path: String) -> String { (try? readWholeFile(path, maxBytes: 1 << 20)).map { String(decoding: $0, as: UTF8.self) } ?? "" }

  /// A rig whose allow-list file holds `text` (reloaded), and a client signed in as operator.
  func operatorWithList(_ text: String) -> (ConsoleTests.Rig, String, ConsoleTests.TestClient) {
    let rig = ConsoleTests.Rig()
    let list = rig.directory + "/allow-list.txt"
    writeFile(list, text)
    let client = rig.connect()
    #expect(client.command("AUTH correct%20horse%20battery").last == "OK operator")
    #expect(client.command("RELOAD").last?.hasPrefix("OK") == true)
    return (rig, list, client)
  }

  /// `csv` sent as IMPORT DATA lines of at most 100 bytes, %XX-escaped.
  func send(_ csv: String, _ client: ConsoleTests.TestClient) -> Bool {
    let bytes = Array(csv.utf8)
    for start in stride(from: 0, to: bytes.count, by: 100) {
      let chunk = PayloadEscaping.escaped(Array(bytes[start..<min(start + 100, bytes.count)]))
      guard client.command("IMPORT DATA " + chunk).last?.hasPrefix("OK ") == true else { return false }
    }
    return true
  }

  @Test("IMPORT: BEGIN, DATA, CHECK writes nothing, APPLY writes and reloads, recorded with who; refusals whole")
  func importPeople() {
    let rig = ConsoleTests.Rig()
    let list = rig.directory + "/allow-list.txt"
    let client = rig.connect()
    #expect(client.command("IMPORT BEGIN").last?.hasPrefix("ERR 401") == true, "operators only")
    #expect(client.command("AUTH correct%20horse%20battery").last == "OK operator")
    #expect(client.command("IMPORT CHECK").last?.hasPrefix("ERR 409 IMPORT BEGIN first") == true)
    let csv = "label,payload,schedule\r\n\"Ivy Smith\",IVY-0001,\r\nbob,BOB-0002,\r\nalice,,\r\n"
    #expect(client.command("IMPORT BEGIN").last?.hasPrefix("OK import begun") == true)
    #expect(send(csv, client))
    let check = client.command("IMPORT CHECK")
    #expect(check == ["| add Ivy%20Smith", "| add bob", "OK import check: 2 added, 0 changed, 0 removed, 1 unchanged; nothing written"], "\(check)")
    #expect(readFile(list) == "text:ALICE label=alice\n", "a check writes nothing")
    // Another session cannot take over an import under way, nor apply it.
    let other = rig.connect()
    _ = other.command("AUTH correct%20horse%20battery")
    #expect(client.command("IMPORT BEGIN").last?.hasPrefix("OK") == true)
    #expect(other.command("IMPORT BEGIN").last?.hasPrefix("ERR 409 another session's import") == true)
    #expect(send(csv, client))
    let applied = client.command("IMPORT APPLY")
    #expect(applied.last?.hasPrefix("OK #") == true && applied.last?.contains("import applied: 2 added") == true, "\(applied)")
    let text = readFile(list)
    #expect(text.hasPrefix("text:ALICE label=alice\nsha256:") && text.contains(" label=Ivy%20Smith\n") && !text.contains("IVY-0001"), "\(text)")
    #expect(client.command("LIST match=ivy").first?.hasPrefix("| Ivy%20Smith tag=") == true, "the live list holds it")
    let commands = rig.loop.engine.events.lines { e in
      e.kind == .command ? EventText.line(e, since: Instant(nanoseconds: 0), payloads: .shown) : nil
    }
    #expect(commands.contains { $0.contains("IMPORT APPLY by ") && $0.contains("2 added, 0 changed, 0 removed") }, "\(commands)")
    // A bad row refuses the whole CSV, naming the record and the rule, never its text.
    #expect(other.command("IMPORT BEGIN").last?.hasPrefix("OK") == true, "the finished import no longer blocks")
    #expect(send("label,payload\r\ncarol,CAROL-1\r\n,SECRET-PASS\r\n", other))
    let refused = other.command("IMPORT APPLY").last ?? ""
    #expect(refused.hasPrefix("ERR 409 the CSV: record 3: label") && !refused.contains("SECRET"), "\(refused)")
    #expect(readFile(list) == text, "nothing written")
    // The file replaced by a directory, then by a FIFO: refused at once, the live list kept.
    for odd in ["directory", "fifo"] {
      unlink(list)
      #expect((odd == "directory" ? mkdir(list, 0o755) : mkfifo(list, 0o644)) == 0)
      #expect(other.command("IMPORT BEGIN").last?.hasPrefix("OK") == true)
      #expect(send("label,payload\r\nwes,WES-1\r\n", other))
      let reply = other.command("IMPORT APPLY").last ?? ""
      #expect(reply.hasPrefix("ERR 503 the allow-list file cannot be read"), "\(odd): \(reply)")
      #expect(other.command("LIST match=ivy").first?.hasPrefix("| Ivy%20Smith tag=") == true, "\(odd): the live list stays")
      if odd == "directory" { rmdir(list) }
    }
    unlink(list)
    // A session that goes leaves nothing behind; bad forms are refused.
    #expect(client.command("IMPORT DATA").last?.hasPrefix("ERR 400") == true)
    #expect(client.command("IMPORT APPLY NOW").last?.hasPrefix("ERR 400") == true)
  }

  @Test(
    "IMPORT CHECK LIST / APPLY LIST: a whole list replaces the file (a backup's): added, changed, removed by label, never a code shown; a list that would not load refused whole"
  )
  func importWholeList() {
    let (rig, list, client) = operatorWithList("text:ALICE label=alice\ntext:BOB label=bob\ntext:NOLABEL\n")
    defer { withExtendedLifetime(rig) {} }  // its loop serves the client
    let whole = "text:ALICE label=alice\ntext:BOB2 label=bob\ntext:CAROL-SECRET label=carol\n"
    #expect(client.command("IMPORT BEGIN").last?.hasPrefix("OK") == true && send(whole, client))
    let check = client.command("IMPORT CHECK LIST")
    #expect(
      check == [
        "| add carol", "| change bob", "| remove an entry without a label",
        "OK import check: 1 added, 1 changed, 1 removed, 1 unchanged; nothing written",
      ], "\(check)")
    #expect(!check.joined().contains("NOLABEL") && !check.joined().contains("CAROL-SECRET"))
    #expect(readFile(list).contains("text:NOLABEL"), "a check writes nothing")
    // Refused whole: a list that does not load (a schedule nobody defined).
    #expect(client.command("IMPORT BEGIN").last?.hasPrefix("OK") == true && send("text:X label=x schedule=nowhere\n", client))
    #expect(client.command("IMPORT APPLY LIST").last?.hasPrefix("ERR 409") == true)
    #expect(readFile(list).contains("text:NOLABEL"))
    #expect(client.command("IMPORT BEGIN").last?.hasPrefix("OK") == true && send(whole, client))
    let applied = client.command("IMPORT APPLY LIST").last ?? ""
    #expect(applied.hasPrefix("OK #") && applied.contains("import applied: 1 added, 1 changed, 1 removed"), "\(applied)")
    #expect(readFile(list) == whole)
    #expect(client.command("LIST match=carol").first?.hasPrefix("| carol tag=") == true, "the live list holds it")
  }

  @Test("IMPORT of a label already on the list: a column the CSV lacks keeps that field, an empty cell clears it (the page's Edit)")
  func keptColumns() {
    let (rig, list, client) = operatorWithList("text:ALICE label=alice card=26:1:2 static=yes\n")
    defer { withExtendedLifetime(rig) {} }  // its loop serves the client
    func apply(_ csv: String) -> String {
      guard client.command("IMPORT BEGIN").last?.hasPrefix("OK") == true, send(csv, client) else { return "not sent" }
      return String(client.command("IMPORT APPLY").last ?? "")
    }
    #expect(apply("label,lockdown\r\nalice,yes\r\n").contains("1 changed"))
    #expect(readFile(list) == "text:ALICE label=alice card=26:1:2 static=yes lockdown=yes\n", "\(readFile(list))")
    #expect(apply("label,card,static\r\nalice,,\r\n").contains("1 changed"))
    #expect(readFile(list) == "text:ALICE label=alice lockdown=yes\n", "\(readFile(list))")
  }
}
