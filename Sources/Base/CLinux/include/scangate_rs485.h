// RS-485 direction control for a serial port (the OSDP panel link).
#ifndef SCANGATE_RS485_H
#define SCANGATE_RS485_H

/// Turns on the driver's RS-485 mode (TIOCSRS485: RTS drives the transceiver's direction,
/// high while sending). 0 on success; -1 with errno (ENOTTY: the driver has no RS-485 mode,
/// e.g. a USB adapter that switches direction by itself).
int sg_tty_rs485_enable(int fd);

#endif
