# shellcheck shell=bash
# shellcheck disable=SC2034 # its variables are for the scripts that source it
# What scripts/deb and scripts/distro-check share (sourced after lib.sh):
# the kernel the packages are for, and the Debian release their install
# check and make distro-check's guest run.
#
# The kernel: KFLAVOUR base or distro packages Linux 6.12 (the distro
# flavour), base-7.3 or distro-7.3 packages Linux 7.3 (distro-7.3: the
# same configuration on 7.3 with its series, patches/7.3).  DEB_FLAVOUR is
# that flavour; DEB_SFX is "" for 6.12 and "-7.3" for 7.3, so that the two
# kernels' packages and work directories live apart ($CACHE/deb,
# $CACHE/deb-7.3).
case $KFLAVOUR in
base | distro) DEB_FLAVOUR=distro DEB_SFX= ;;
base-7.3 | distro-7.3) DEB_FLAVOUR=distro-7.3 DEB_SFX=-7.3 ;;
*) die "the Debian packages are of the distro flavour's kernel: KFLAVOUR=distro (Linux 6.12) or distro-7.3 (Linux 7.3), not $KFLAVOUR" ;;
esac
KFLAVOUR=$DEB_FLAVOUR
export KFLAVOUR
DEB_CHANGELOG_DIST=$([ "$KVER" = 6.12 ] && echo bookworm || echo trixie)

# The Debian release: DISTRO_SUITE, trixie (Debian 13, the stable release
# and the default) or bookworm (Debian 12).  Its root is made by mmdebstrap
# from these sources; Debian's archive keyring on this machine signs both.
DISTRO_SUITE=${DISTRO_SUITE:-trixie}
case $DISTRO_SUITE in
bookworm) DISTRO_NAME="Debian 12 (bookworm)" ;;
trixie) DISTRO_NAME="Debian 13 (trixie)" ;;
*) die "unknown DISTRO_SUITE '$DISTRO_SUITE' (trixie or bookworm)" ;;
esac
export DISTRO_SUITE
# debian_sources: mmdebstrap's source lines of the release, one an argument.
debian_sources() {
	printf '%s\n' "deb http://deb.debian.org/debian $DISTRO_SUITE main" \
		"deb http://deb.debian.org/debian $DISTRO_SUITE-updates main" \
		"deb http://deb.debian.org/debian-security $DISTRO_SUITE-security main"
}
