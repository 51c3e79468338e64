// libFuzzer harness for the schedule file parser: any input is accepted whole within the bounds
// or rejected whole naming a line of the input, and an accepted set answers every civil time.
import ScanCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  let bytes = Array(UnsafeBufferPointer(start: data, count: size))
  switch ScheduleSet.parse(bytes) {
  case .success(let set):
    precondition(set.names.count <= ScheduleSet.schedulesMax && set.holidays.count <= ScheduleSet.holidaysMax)
    precondition(set.windows.allSatisfy { $0.count <= ScheduleSet.windowsMax })
    for (i, _) in set.names.enumerated() {
      for weekday in 0..<7 {
        for minute in stride(from: 0, to: 1_440, by: 97) {
          _ = set.isOpen(i, at: CivilTime(year: 2026, month: 12, day: 25, weekday: weekday, minuteOfDay: minute))
        }
      }
    }
  case .failure(let error):
    precondition(error.line >= 0 && error.line <= size + 1)
  }
  return 0
}
