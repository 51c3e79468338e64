// Every domain's adapter under one import (as ScanCore is every pure core): the service, the
// tools and the tests import ScanLinux; an adapter imports only the adapters Package.swift lets it.
@_exported import ScanAccessLinux
@_exported import ScanAdminLinux
@_exported import ScanAuditLinux
@_exported import ScanConfigLinux
@_exported import ScanConsoleLinux
@_exported import ScanDoorLinux
@_exported import ScanEmergencyLinux
@_exported import ScanFeedbackLinux
@_exported import ScanFleetLinux
@_exported import ScanKeypadLinux
@_exported import ScanPanelsLinux
@_exported import ScanAccessSheet
@_exported import ScanLoop
@_exported import ScanPlatform
@_exported import ScanReaderLinux
@_exported import ScanTurnstileLinux
