import { Module } from '@nestjs/common';
import { HomeController } from './home.controller';

/** `GET /`: pointers to the console and the API description. */
@Module({
  controllers: [HomeController],
})
export class HomeModule {}
