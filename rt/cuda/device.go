package cuda

import "bytes"

// DeviceAttribute is a CUdevice_attribute (cuda.h); the values are the driver's ABI.
type DeviceAttribute int32

// The device attributes kgen's generated code and tests ask for.
const (
	AttrMaxThreadsPerBlock               DeviceAttribute = 1
	AttrMaxSharedMemoryPerBlock          DeviceAttribute = 8
	AttrWarpSize                         DeviceAttribute = 10
	AttrMaxRegistersPerBlock             DeviceAttribute = 12
	AttrMultiprocessorCount              DeviceAttribute = 16
	AttrComputeCapabilityMajor           DeviceAttribute = 75
	AttrComputeCapabilityMinor           DeviceAttribute = 76
	AttrMaxSharedMemoryPerMultiprocessor DeviceAttribute = 81
	AttrMaxRegistersPerMultiprocessor    DeviceAttribute = 82
	AttrMaxSharedMemoryPerBlockOptin     DeviceAttribute = 97
)

// Device is one CUDA device (a CUdevice handle and its ordinal).
type Device struct {
	d       *Driver
	h       int32
	ordinal int
}

// Ordinal returns the index the device was opened with.
func (dev *Device) Ordinal() int { return dev.ordinal }

// Attribute returns the value of one device attribute.
func (dev *Device) Attribute(a DeviceAttribute) (int, error) {
	var v int32
	if err := checkf(dev.d.api.cuDeviceGetAttribute(&v, int32(a), dev.h), "cuDeviceGetAttribute(%d)", a); err != nil {
		return 0, err
	}
	return int(v), nil
}

// Name returns the device's marketing name, e.g. "NVIDIA H200".
func (dev *Device) Name() (string, error) {
	buf := make([]byte, 256)
	if err := check("cuDeviceGetName", dev.d.api.cuDeviceGetName(&buf[0], int32(len(buf)), dev.h)); err != nil {
		return "", err
	}
	if i := bytes.IndexByte(buf, 0); i >= 0 {
		buf = buf[:i]
	}
	return string(buf), nil
}

// TotalMemory returns the device's global memory in bytes.
func (dev *Device) TotalMemory() (uint64, error) {
	var n uintptr
	if err := check("cuDeviceTotalMem_v2", dev.d.api.cuDeviceTotalMem(&n, dev.h)); err != nil {
		return 0, err
	}
	return uint64(n), nil
}

// Props are the device facts a kernel launcher needs, read in one go by Device.Props.
type Props struct {
	Name                      string
	Major, Minor              int // compute capability, e.g. 9 and 0 for sm_90
	Multiprocessors           int
	MaxThreadsPerBlock        int
	WarpSize                  int
	SharedMemoryPerBlock      int // without opt-in (48 KiB on every GPU since Kepler)
	SharedMemoryPerBlockOptin int // with cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)
	SharedMemoryPerSM         int
	RegistersPerBlock         int
	TotalMemory               uint64
}

// SM returns the compute capability as one number, 10*major + minor (90 for sm_90).
func (p Props) SM() int { return 10*p.Major + p.Minor }

// Props reads the device's name, memory and the attributes listed in Props.
func (dev *Device) Props() (Props, error) {
	var p Props
	var err error
	if p.Name, err = dev.Name(); err != nil {
		return p, err
	}
	if p.TotalMemory, err = dev.TotalMemory(); err != nil {
		return p, err
	}
	for _, f := range []struct {
		a   DeviceAttribute
		dst *int
	}{
		{AttrComputeCapabilityMajor, &p.Major},
		{AttrComputeCapabilityMinor, &p.Minor},
		{AttrMultiprocessorCount, &p.Multiprocessors},
		{AttrMaxThreadsPerBlock, &p.MaxThreadsPerBlock},
		{AttrWarpSize, &p.WarpSize},
		{AttrMaxSharedMemoryPerBlock, &p.SharedMemoryPerBlock},
		{AttrMaxSharedMemoryPerBlockOptin, &p.SharedMemoryPerBlockOptin},
		{AttrMaxSharedMemoryPerMultiprocessor, &p.SharedMemoryPerSM},
		{AttrMaxRegistersPerBlock, &p.RegistersPerBlock},
	} {
		if *f.dst, err = dev.Attribute(f.a); err != nil {
			return p, err
		}
	}
	return p, nil
}
