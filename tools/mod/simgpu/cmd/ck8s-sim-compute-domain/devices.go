package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"
)

// imexChannelsDeviceName is the character device's /proc/devices name (nvlib.go
// nvidiaCapsImexChannelsDeviceName). The NVIDIA kernel driver registers it with a dynamic major.
const imexChannelsDeviceName = "nvidia-caps-imex-channels"

// channelName / daemonName are deviceinfo.go CanonicalName: "<type>-<id>".
func channelName(id int) string { return fmt.Sprintf("%s-%d", channelType, id) }
func daemonName(id int) string  { return fmt.Sprintf("%s-%d", daemonType, id) }

// deviceType says what an allocatable device name is ("" when it is none of ours): nvlib.go
// enumerateAllPossibleDevices makes channel-0..channel-2047 and daemon-0 allocatable.
func deviceType(name string) string {
	var id int
	if n, err := fmt.Sscanf(name, "channel-%d", &id); err == nil && n == 1 && name == channelName(id) &&
		id >= 0 && id < maxImexChannelCount {
		return channelType
	}
	if name == daemonName(0) {
		return daemonType
	}
	return ""
}

// device is deviceinfo.go GetDevice: attributes "type" (string) and "id" (int), nothing else.
func device(typ string, id int) resourceapi.Device {
	return resourceapi.Device{
		Name: fmt.Sprintf("%s-%d", typ, id),
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"type": {StringValue: ptr.To(typ)},
			"id":   {IntValue: ptr.To(int64(id))},
		},
	}
}

// publishedDevices is driver.go computeDomainPublishedDevices in driver-managed IMEX mode: of the
// 2048 allocatable channels only channel 0 is advertised, plus the daemon device.
func publishedDevices() []resourceapi.Device {
	return []resourceapi.Device{device(channelType, 0), device(daemonType, 0)}
}

// deviceMajor is internal/common/nvcaps.go GetDeviceMajor: the number before `name` in the
// "Character devices:" section of /proc/devices (first match, name newline-terminated).
func deviceMajor(procDevices, name string) (int, error) {
	re := regexp.MustCompile("(?s)Character devices:.*?([0-9]+) " + regexp.QuoteMeta(name) + "\n.*Block devices:")
	m := re.FindStringSubmatch(procDevices)
	if len(m) != 2 {
		return -1, fmt.Errorf("error parsing /proc/devices: unexpected regex match: %v", m)
	}
	var major int
	if _, err := fmt.Sscanf(m[1], "%d", &major); err != nil {
		return -1, err
	}
	return major, nil
}

// readDeviceMajor reads the major from a /proc/devices-format file (the host's own, or the node
// tier's stand-in when no NVIDIA driver is loaded).
func readDeviceMajor(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return -1, fmt.Errorf("error reading '%s': %w", path, err)
	}
	if !strings.Contains(string(data), imexChannelsDeviceName) {
		return -1, fmt.Errorf("%s lists no %q (is the NVIDIA driver loaded?)", path, imexChannelsDeviceName)
	}
	return deviceMajor(string(data), imexChannelsDeviceName)
}
