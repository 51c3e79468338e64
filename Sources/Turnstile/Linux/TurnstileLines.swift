import ScanCore

// The turnstile's lines on the loop (TurnstileController) live here.
