import ScanCore

// The emergency inputs on the loop (EmergencyController) live here.
