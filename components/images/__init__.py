"""GPU node images with the NVIDIA driver inside (`gpuStack.driver: host`, docs/adr/0020).

A separate Pulumi program (`images/`) builds them with EC2 Image Builder from Canonical's Ubuntu
24.04 AMI and Ubuntu's signed NVIDIA server driver, and publishes each new image's id to an SSM
parameter that pools name as `nodePools[].ami`. Pure parts: settings.py (the program's settings),
document.py (what the build runs), plan.py (names, versions, parameters); component.py is the shell.
"""
