#!/bin/sh
# Mosquitto's start in docker-compose.yml: writes the broker's password file and a copy of the ACL
# file beside this script into AUTH_DIR, then runs COMMAND (the broker) if one is given.
#
#   start.sh AUTH_DIR [COMMAND...]
#
# PLYARENA_MQTT_USERS names the users, "name:password" pairs separated by blanks. Each needs a
# `user` block in the ACL file. Names and passwords may hold letters, digits and . _ - (and ~ in
# passwords): clients put them as they are in mqtt://name:password@host:port URLs. A "health" user,
# for the container's health check, gets a new random password at each start, in
# AUTH_DIR/health.password (readable by root only).
set -euf

auth_dir=${1:?usage: start.sh AUTH_DIR [COMMAND...]}
shift
acl="$(dirname "$0")/acl"
passwd="$auth_dir/passwd"

fail() {
    echo "start.sh: $*" >&2
    exit 1
}

add_user() {
    case $1 in
        '' | *[!A-Za-z0-9._-]*) fail "user name '$1': use letters, digits and . _ - only" ;;
    esac
    case $2 in
        '' | *[!A-Za-z0-9._~-]*) fail "the password of $1 is empty or holds other characters than letters, digits and . _ ~ -" ;;
    esac
    grep -qx "user $1" "$acl" || fail "user $1 has no 'user $1' block in $acl"
    mosquitto_passwd -b "$passwd" "$1" "$2"
}

umask 077
mkdir -p "$auth_dir"
rm -f "$passwd" "$auth_dir/acl" "$auth_dir/health.password"
: >"$passwd"
for pair in ${PLYARENA_MQTT_USERS:?set PLYARENA_MQTT_USERS to name:password pairs}; do
    case $pair in
        *:*) add_user "${pair%%:*}" "${pair#*:}" ;;
        *) fail "'$pair' in PLYARENA_MQTT_USERS is not name:password" ;;
    esac
done
health=$(tr -dc 'A-Za-z0-9' </dev/urandom | head -c 32)
printf '%s\n' "$health" >"$auth_dir/health.password"
add_user health "$health"
cp "$acl" "$auth_dir/acl"
# The broker reads both files after it drops root for its own user.
if [ "$(id -u)" = 0 ] && id mosquitto >/dev/null 2>&1; then
    chown mosquitto:mosquitto "$auth_dir" "$passwd" "$auth_dir/acl"
fi

[ $# -eq 0 ] || exec "$@"
