package cuda

import (
	"fmt"
	"strconv"
	"strings"
)

// CheckTarget returns nil if a GPU with props can run PTX written for target ("sm_80", "sm_86",
// "sm_90a", ...), and otherwise an error naming the GPU, its compute capability and the target.
// Plain sm_XY code runs on compute capability X.Y and later (the driver JIT-compiles the PTX
// forward); architecture-specific sm_XYa code (wgmma, setmaxnreg) runs only on exactly X.Y.
func CheckTarget(p Props, target string) error {
	num, arch := strings.CutSuffix(target, "a")
	digits, ok := strings.CutPrefix(num, "sm_")
	n, err := strconv.Atoi(digits)
	if !ok || err != nil || n < 10 || n > 999 || len(digits) < 2 {
		return fmt.Errorf("cuda: unknown target %q (want sm_XY or sm_XYa)", target)
	}
	major, minor := n/10, n%10
	have := p.SM()
	switch {
	case arch && (p.Major != major || p.Minor != minor):
		return fmt.Errorf("cuda: %s (compute capability %d.%d) cannot run %s code, which needs exactly %d.%d",
			p.Name, p.Major, p.Minor, target, major, minor)
	case !arch && have < n:
		return fmt.Errorf("cuda: %s (compute capability %d.%d) cannot run %s code, which needs %d.%d or later",
			p.Name, p.Major, p.Minor, target, major, minor)
	}
	return nil
}
