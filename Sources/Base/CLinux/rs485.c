#include "scangate_rs485.h"

#include <linux/serial.h>
#include <string.h>
#include <sys/ioctl.h>

int sg_tty_rs485_enable(int fd) {
  struct serial_rs485 rs485;
  memset(&rs485, 0, sizeof rs485);
  rs485.flags = SER_RS485_ENABLED | SER_RS485_RTS_ON_SEND;
  return ioctl(fd, TIOCSRS485, &rs485);
}
