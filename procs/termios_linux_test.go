package procs

import "golang.org/x/sys/unix"

// The ioctls that read and set a terminal's termios.
const ioctlGetTermios, ioctlSetTermios = unix.TCGETS, unix.TCSETS
