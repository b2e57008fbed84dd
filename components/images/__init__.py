"""Node images for every role (docs/images.md): gpu-node (the NVIDIA driver inside, `gpuStack.driver:
host`, docs/adr/0020) and control-plane, both carrying the k8s snap at the cluster's revision and
every preloaded image.

A separate Pulumi program (`images/`) builds them with EC2 Image Builder from Canonical's Ubuntu
24.04 AMI and publishes each new image's id to an SSM parameter that pools name as
`nodePools[].ami` (control planes: `controlPlane.ami`). Pure parts: settings.py (the program's
settings), document.py (what the build runs, and AWSTOE's rules), snap_steps.py and
preload_steps.py (the carried files), components/addons/image_catalog.py (which images), plan.py (names, versions,
parameters, AMI tags); component.py is the shell.
"""
