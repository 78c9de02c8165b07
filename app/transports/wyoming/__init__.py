"""Home Assistant's Wyoming protocol: apace as speech-to-text, text-to-speech and
conversation agent over TCP (`apace wyoming`, `apace serve --wyoming PORT`)."""
