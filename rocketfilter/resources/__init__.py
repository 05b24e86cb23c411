"""Files rocketfilter ships: log4j2.properties, the quiet Spark logging rules."""
