package unix

const (
	SYS_READ  = 0
	SYS_WRITE = SYS_READ + 1
)
