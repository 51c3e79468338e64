/// The pure product in one import: every domain's core, lowest first (Package.swift draws the
/// arrows between them). ScanLinux, ScanConsole, ScanSim, the executable and the tests import this.
@_exported import ScanBase
@_exported import ScanAccess
@_exported import ScanDoor
@_exported import ScanTurnstile
@_exported import ScanEmergency
@_exported import ScanKeypad
@_exported import ScanAudit
@_exported import ScanReader
@_exported import ScanPanels
@_exported import ScanFleet
@_exported import ScanFeedback
@_exported import ScanConfig
